"""The plumbing every workflow shares, one home per idea; `conversion`, `inference` and `training` import it,
and it imports nothing of theirs (only `modeling_elmo`).

* `errors`: the error types whose message alone tells the user what is wrong with which input;
* `atomic_output`: outputs written to a temporary path beside the target and renamed when complete;
* `options`: bilm-tf's `options.json` <-> `ElmoConfig`, one table (`OPTION_FIELDS`) read both ways;
* `model_folder`: whether a path is a usable ELMo model folder, and the one line that names what is wrong.
"""
