"""Train ELMo's biLM, from scratch or from a saved model (domain fine-tuning), on one CPU or many GPUs.

From the repository root, as Hugging Face's example scripts: `accelerate launch training/pretrain.py ...` (DDP over
the processes accelerate starts; `--mixed_precision` is accelerate's) or `python training/pretrain.py ...` for one
process. From the installed package: `elmo-pretrain ...` (one process) or `accelerate launch -m
elmo_transformers.training.pretrain ...`. See the README's "Train your own ELMo".
"""

from __future__ import annotations

import logging
import math
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import DDPCommunicationHookType, DistributedDataParallelKwargs, gather_object, set_seed
from safetensors import SafetensorError
from tqdm.auto import tqdm

from elmo_transformers.common.atomic_output import atomic_output_folder, publish_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.disk_space import check_free_space, format_bytes, is_disk_full
from elmo_transformers.common.errors import DataFileError, TrainingError, exit_on_error, first_line
from elmo_transformers.common.processes import leave_process_group, on_main_process
from elmo_transformers.common.run_folder import (
    EVAL_RESULTS_FILE,
    METRICS_FILE,
    MODEL_FOLDER,
    PERPLEXITY_PLOT_FILE,
    TRAINING_ARGS_FILE,
)
from elmo_transformers.training.argument_parser import OneSpellingArgumentParser
from elmo_transformers.training.output_dir import exclusive_output_dir, refuse_existing_output_dir
from elmo_transformers.training.pretraining.checkpoint import (
    TRAINER_STATE_FILE,
    checkpoint_name,
    latest_checkpoint,
    load_optimizer_state,
    load_process_state,
    load_trainer_state,
    load_weights,
    refuse_damaged_checkpoint,
    save_optimizer_state,
    save_process_state,
    staging_folder,
    write_json,
)
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.metrics_log import MetricsLog
from elmo_transformers.training.pretraining.perplexity import evaluate_perplexity
from elmo_transformers.training.pretraining.pretrain_arguments import (
    DEFAULT_LEARNING_RATES,
    NO_SPACE_CHECK_FLAG,
    LmDataArguments,
    LmModelArguments,
    LmTrainingArguments,
    PretrainArguments,
)
from elmo_transformers.training.pretraining.sparse_softmax_sync import (
    average_touched_softmax_rows,
    copy_from_first_process,
    exclude_softmax_from_ddp,
)
from elmo_transformers.training.pretraining.starting_model import load_starting_model
from elmo_transformers.training.pretraining.text_stream import (
    CorpusReport,
    SentenceStream,
    expand_files,
    read_sentences,
)
from elmo_transformers.training.pretraining.window_packer import WindowEncoder, WindowPacker
from modeling_elmo.native_elmo import set_native_libraries
from modeling_elmo.text_elmo import VOCABULARY_FILE

logger = logging.getLogger("elmo_transformers.training.pretraining.pretrain")
# The tensors of a parameter's size that each --optimizer keeps in optimizer.pt (Adagrad's sum; AdamW's two moments).
OPTIMIZER_STATES_PER_PARAMETER = {"adagrad": 1, "adamw": 2}
# What a write of a checkpoint or the model raises when it fails: OSError (a full disk: ENOSPC), torch's
# RuntimeError (which carries the OSError of its file), SafetensorError (whose text names the OS error).
_WRITE_ERRORS = (OSError, RuntimeError, SafetensorError)

EXAMPLES = """examples (from the repository root; from the installed package: elmo-build-vocab ..., elmo-pretrain ...
and accelerate launch ... -m elmo_transformers.training.pretrain ...):
  # a new biLM from bilm-tf options, one process
  python training/build_vocab.py --train_files 'corpus/train/*.txt' --output vocab.txt --min_count 3
  python training/pretrain.py --train_files 'corpus/train/*.txt' --validation_files corpus/heldout.txt \\
      --vocab_file vocab.txt --options_file options.json --output_dir my-elmo --max_steps 10000

  # continue a converted or trained model on domain text, with a vocabulary of that text, on 4 GPUs
  accelerate launch --num_processes 4 training/pretrain.py --model_name_or_path elmo-original \\
      --train_files 'bio/*.txt' --vocab_file bio_vocab.txt --output_dir elmo-bio --num_train_epochs 1

  # resume after an interruption (same command, plus)
  ... --resume_from_checkpoint my-elmo/checkpoint-4000     (or: --resume_from_checkpoint latest)
"""


def parse_args(argv: list[str] | None = None) -> PretrainArguments:
    """The run's options from `argv` (default: the command line); --help, or a usage error, exits."""
    groups = (LmDataArguments, LmModelArguments, LmTrainingArguments)
    parser = OneSpellingArgumentParser.for_command(groups, doc=__doc__, examples=EXAMPLES)
    return PretrainArguments.from_groups(*parser.parse_command_line(argv))


class LmTrainer:
    """One process's part of a training run (every process runs the same loop on its own streams)."""

    def __init__(self, args: PretrainArguments) -> None:
        self.args = args
        # Without a GPU, processes started by `accelerate launch --multi_gpu` (or torchrun) join one CPU group
        # (gloo); accelerate's own `--cpu` flag starts a single process.
        if args.ddp_comm_hook == "bf16" and not torch.cuda.is_available():
            raise ValueError("--ddp_comm_hook bf16 needs GPUs (NCCL); use fp16 on CPUs")
        self.accelerator = Accelerator(
            cpu=not torch.accelerator.is_available(),
            kwargs_handlers=[DistributedDataParallelKwargs(comm_hook=DDPCommunicationHookType(args.ddp_comm_hook))],
        )
        self.rank, self.world_size = self.accelerator.process_index, self.accelerator.num_processes
        self.output_dir = Path(args.output_dir)
        set_seed(args.seed + self.rank)
        self.vocabulary = LmVocabulary.from_file(args.vocab_file)
        self.train_files = expand_files(args.train_files, option="--train_files")
        self.validation_files = (
            expand_files(args.validation_files, option="--validation_files") if args.validation_files else None
        )
        self.corpus = self._count_corpus()
        starting = load_starting_model(
            self.vocabulary,
            options_file=args.options_file,
            model_name_or_path=args.model_name_or_path,
            num_sampled=args.num_sampled,
            dropout=args.dropout,
        )
        self.model, self.tokenizer, self.start_summary = starting.model, starting.tokenizer, starting.summary
        self.encode = WindowEncoder(self.tokenizer, self.vocabulary)
        self.packers = [self._packer(reverse) for reverse in (False, True)]
        self.sampler_generator = torch.Generator().manual_seed(args.seed * 1000 + self.rank)
        optimizer = self._optimizer()
        self.sync_softmax_rows = args.sparse_softmax_sync and self.world_size > 1
        if self.sync_softmax_rows:
            exclude_softmax_from_ddp(self.model)
        self.softmax_weight = self.model.softmax.weight
        self.model, self.optimizer = self.accelerator.prepare(self.model, optimizer)
        if self.sync_softmax_rows:
            copy_from_first_process(self.softmax_weight)
        self.lstm_state: tuple[torch.Tensor, torch.Tensor] | None = None
        self.step = 0
        self.metrics = MetricsLog(self.output_dir / METRICS_FILE, enabled=self.accelerator.is_main_process)
        self.max_steps = args.max_steps or max(1, math.ceil(args.num_train_epochs * self._steps_per_epoch()))

    # --- setup ---------------------------------------------------------------------------------------------
    def _count_corpus(self) -> CorpusReport:
        report = CorpusReport()
        for path in self.train_files:
            read_sentences(path, report)
        if not report.sentences:
            raise DataFileError(f"--train_files: no sentences in {', '.join(map(str, self.train_files))}")
        batch_words = self.args.per_device_train_batch_size * self.args.unroll_steps * self.world_size
        if report.target_words < batch_words:
            raise DataFileError(
                f"--train_files hold {report.target_words:,} target words, fewer than one batch "
                f"({self.args.per_device_train_batch_size} streams x {self.args.unroll_steps} steps x "
                f"{self.world_size} processes = {batch_words:,}): use a smaller --per_device_train_batch_size or "
                "--unroll_steps, or more text"
            )
        return report

    def _steps_per_epoch(self) -> float:
        return self.corpus.target_words / (
            self.args.per_device_train_batch_size * self.args.unroll_steps * self.world_size
        )

    def _packer(self, reverse: bool) -> WindowPacker:
        # Independent shuffles for the two directions, as bilm-tf's two datasets.
        source = SentenceStream(
            self.train_files, seed=self.args.seed * 2 + int(reverse), rank=self.rank, world_size=self.world_size
        )
        return WindowPacker(
            source,
            batch_size=self.args.per_device_train_batch_size,
            unroll_steps=self.args.unroll_steps,
            reverse=reverse,
        )

    def _optimizer(self) -> torch.optim.Optimizer:
        if self.args.optimizer == "adagrad":  # bilm-tf: Adagrad, initial accumulator 1.0, no schedule
            return torch.optim.Adagrad(self.model.parameters(), lr=self._learning_rate(), initial_accumulator_value=1.0)
        return torch.optim.AdamW(self.model.parameters(), lr=self._learning_rate())

    def _learning_rate(self) -> float:
        return self.args.learning_rate or DEFAULT_LEARNING_RATES[self.args.optimizer]

    # --- the loop ------------------------------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Train into output_dir, which no other run may write meanwhile: its lock is held from before the first
        write to the end."""
        with exclusive_output_dir(self.output_dir):
            return self._train()

    def leave_process_group(self) -> None:
        """Once the run is over: free the DDP model, then leave the run's process group (`processes.
        leave_process_group`). The model goes first: destroying the group while DDP's Reducer still held it
        deadlocked a process (the group's destructor joins gloo's worker thread with the GIL held, while that thread
        waits for the GIL to free a finished allgather's tensor)."""
        del self.model, self.optimizer, self.softmax_weight
        self.accelerator.free_memory()  # accelerate's own references to the prepared model and optimizer
        leave_process_group()

    def _train(self) -> dict[str, Any]:
        args, accelerator = self.args, self.accelerator
        on_main_process(self._prepare_output_dir, error=TrainingError)
        if args.resume_from_checkpoint:
            self._resume(self._checkpoint_to_resume())
        if not args.no_space_check:
            on_main_process(self._check_free_space, error=TrainingError)
        if accelerator.is_main_process:
            logger.info("%s; corpus: %s", self.start_summary, self.corpus.summary())
            logger.info(
                "%d steps of %d processes x %d streams x %d words (%.2f epochs)",
                self.max_steps,
                self.world_size,
                args.per_device_train_batch_size,
                args.unroll_steps,
                self.max_steps / self._steps_per_epoch(),
            )
        self.model.train()
        # Closed on any exit: a bar left open is printed again at exit, after an interruption's one line.
        with tqdm(
            total=self.max_steps, initial=self.step, desc="training", disable=not accelerator.is_main_process
        ) as bar:
            window_losses, started, words = [], time.perf_counter(), 0
            while self.step < self.max_steps:
                output = self._train_step()
                window_losses.append((output.forward_loss.item(), output.backward_loss.item()))
                words += 2 * args.per_device_train_batch_size * args.unroll_steps * self.world_size
                self.step += 1
                bar.update()
                if self.step % args.logging_steps == 0 or self.step == self.max_steps:
                    elapsed = time.perf_counter() - started
                    with self._saving(self.metrics.path):  # a full disk here too ends every process in one line
                        record = self.metrics.log_training(self.step, window_losses, words / elapsed, self._epoch())
                    bar.set_postfix(
                        perplexity=f"{record['train_perplexity']:.1f}", words_per_s=f"{words / elapsed:.0f}"
                    )
                    window_losses, started, words = [], time.perf_counter(), 0
                eval_steps = args.eval_steps or args.save_steps
                if self.validation_files and (self.step % eval_steps == 0 or self.step == self.max_steps):
                    self._evaluate()
                if self._is_save_step(self.step):
                    self._save_checkpoint()
        return self._save_final_model()

    def _train_step(self):
        fwd, bwd = (self.encode(packer.next_window()) for packer in self.packers)
        device = self.accelerator.device
        output = self.model(
            input_ids=fwd[0].to(device),
            backward_input_ids=bwd[0].to(device),
            labels=fwd[1].to(device),
            backward_labels=bwd[1].to(device),
            state=self.lstm_state,
            sampler_generator=self.sampler_generator,
        )
        self.accelerator.backward(output.loss)
        if self.sync_softmax_rows:
            average_touched_softmax_rows(self.softmax_weight, self.world_size)
        if self.args.max_grad_norm:
            self.accelerator.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.lstm_state = tuple(tensor.detach() for tensor in output.state)  # truncated BPTT
        return output

    def _epoch(self) -> float:
        """Epochs of the forward stream read so far on this process."""
        source = self.packers[0].source
        shards = len(source.files)
        return source.epoch + source.shard_position / shards

    def _evaluate(self) -> None:
        """The held-out perplexity, on the main process, logged; every process waits for it (the end of the
        `_saving` block, which also turns a full disk while logging into one line on every process)."""
        is_main = self.accelerator.is_main_process
        if is_main:
            results = evaluate_perplexity(
                self.accelerator.unwrap_model(self.model),
                self.tokenizer,
                self.vocabulary,
                self.validation_files,
                batch_size=self.args.per_device_eval_batch_size,
                unroll_steps=self.args.unroll_steps,
            )
            logger.info("step %d: validation perplexity %.2f", self.step, results["perplexity"])
        with self._saving(self.metrics.path):
            if is_main:
                self.metrics.log_evaluation(self.step, results)

    # --- saving and resuming -------------------------------------------------------------------------------
    def _is_save_step(self, step: int) -> bool:
        """Whether `step` ends with a checkpoint: every --save_steps, and the last step (as the Trainer), so that
        the end of the run can be resumed too (with a larger --max_steps, or to write the model again)."""
        return step % self.args.save_steps == 0 or step == self.max_steps

    def _prepare_output_dir(self) -> None:
        """On the main process, holding the output lock."""
        args = self.args
        refuse_existing_output_dir(
            self.output_dir,
            overwrite=args.overwrite_output_dir or bool(args.resume_from_checkpoint),
            resume="--resume_from_checkpoint",
        )
        self.output_dir.mkdir(parents=True, exist_ok=True)

    def _check_free_space(self) -> None:
        """Refuse to start a run that would fill the disk before its end: the checkpoints still to write (every
        one is kept) and the model, estimated from the parameters and the optimizer's state; the few files of code
        and tokenizer that each holds besides are left out."""
        parameter_bytes = sum(parameter.nbytes for parameter in self.model.parameters())
        checkpoint_bytes = parameter_bytes * (1 + OPTIMIZER_STATES_PER_PARAMETER[self.args.optimizer])
        save_steps = self.args.save_steps
        checkpoints = self.max_steps // save_steps - self.step // save_steps  # the multiples in (step, max_steps]
        if self.max_steps % save_steps and self.step < self.max_steps:
            checkpoints += 1  # the last step's
        check_free_space(
            self.output_dir,
            checkpoints * checkpoint_bytes + parameter_bytes,
            what=f"{checkpoints:,} checkpoint(s) of {format_bytes(checkpoint_bytes)} and the model",
            error=TrainingError,
            flag=NO_SPACE_CHECK_FLAG,
        )

    def _checkpoint_to_resume(self) -> Path:
        name = self.args.resume_from_checkpoint
        folder = latest_checkpoint(self.output_dir) if name == "latest" else Path(name)
        if folder is None or not (folder / TRAINER_STATE_FILE).is_file():
            raise TrainingError(f"no checkpoint to resume from: {name!r} (looked in {self.output_dir})")
        return folder

    def _save_folder(self, folder: Path) -> None:
        """The model folder: weights, config and code, tokenizer and softmax vocabulary."""
        model = self.accelerator.unwrap_model(self.model)
        model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        self.vocabulary.save(folder / VOCABULARY_FILE)

    @contextmanager
    def _saving(self, target: Path, staging: Path | None = None) -> Iterator[None]:
        """Write part of `target` inside the block, on every process. A write that fails on any process (a full
        disk) stops all of them alike, with one line naming `target`, the newest checkpoint saved and how to
        continue, once the main process removed `staging`; the checkpoints saved before stay as they are. The
        failures are gathered from every process, which also makes the block's end a barrier."""
        failure: str | None = None
        try:
            yield
        except _WRITE_ERRORS as error:
            failure = self._not_saved(target, error)
        failures = [message for message in gather_object([failure]) if message is not None]
        if failures:
            if staging is not None and self.accelerator.is_main_process:
                shutil.rmtree(staging, ignore_errors=True)
            raise TrainingError(failures[0])

    def _not_saved(self, target: Path, error: BaseException) -> str:
        full = is_disk_full(error)
        why = f"the disk of {self.output_dir} is full" if full else first_line(error)
        latest = latest_checkpoint(self.output_dir)
        saved = f"the newest intact checkpoint is {latest}" if latest else "no checkpoint was saved before it"
        then = "resume with --resume_from_checkpoint latest" if latest else "start again with --overwrite_output_dir"
        return f"{target} was not saved: {why}; {saved}: {'free some space and ' if full else ''}{then}"

    def _save_checkpoint(self) -> None:
        is_main = self.accelerator.is_main_process
        target = self.output_dir / checkpoint_name(self.step)
        staging = staging_folder(self.output_dir, self.step)
        with self._saving(target, staging):
            if is_main:
                shutil.rmtree(staging, ignore_errors=True)  # left by a run killed while saving
                staging.mkdir(parents=True)
        with self._saving(target, staging):
            if is_main:
                self._save_folder(staging)
                save_optimizer_state(staging, self.optimizer)
                write_json(
                    staging / TRAINER_STATE_FILE,
                    {
                        "step": self.step,
                        "max_steps": self.max_steps,
                        "world_size": self.world_size,
                        "args": self.args.record(),
                    },
                )
            save_process_state(
                staging,
                self.rank,
                lstm_state=self.lstm_state,
                sampler_generator=self.sampler_generator,
                data_state={"packers": [packer.state_dict() for packer in self.packers]},
                device=self.accelerator.device,
            )
        with self._saving(target, staging):
            if is_main:  # once every process has written its files (the block above ends in a barrier)
                record_checksums(staging)
                publish_folder(staging, target)

    def _resume(self, folder: Path) -> None:
        refuse_damaged_checkpoint(folder)
        saved = load_process_state(folder, self.rank, self.world_size, packers=len(self.packers))
        model = self.accelerator.unwrap_model(self.model)
        model.load_state_dict(load_weights(folder))
        self.optimizer.load_state_dict(load_optimizer_state(folder))
        device = self.accelerator.device
        torch.set_rng_state(saved["torch_rng"])
        if "cuda_rng" in saved and device.type == "cuda":
            torch.cuda.set_rng_state(saved["cuda_rng"], device)
        self.sampler_generator.set_state(saved["sampler_rng"])
        for packer, state in zip(self.packers, saved["data_state"]["packers"], strict=True):
            packer.load_state_dict(state)
        self.lstm_state = (saved["lstm_h"].to(device), saved["lstm_c"].to(device))
        self.step = load_trainer_state(folder)["step"]
        self.metrics.truncate_after(self.step)
        # The weights now come from the checkpoint, not from where the run first started.
        self.start_summary = f"resumed from {folder} at step {self.step}"

    def _save_final_model(self) -> dict[str, Any]:
        """output_dir/model, with the last validation perplexity and its plot (when there are --validation_files)."""
        results: dict[str, Any] = {}
        final = self.output_dir / MODEL_FOLDER
        with self._saving(final):  # atomic_output_folder removes its own staging folder
            if self.accelerator.is_main_process:
                if self.validation_files:
                    results = self.metrics.last_evaluation() or {}
                with atomic_output_folder(final, overwrite=True) as staging:
                    self._save_folder(staging)
                    write_json(staging / EVAL_RESULTS_FILE, {"step": self.step, **results})
                    write_json(staging / TRAINING_ARGS_FILE, self.args.record())
                    if self.validation_files:
                        self.metrics.plot(staging / PERPLEXITY_PLOT_FILE)
                    record_checksums(staging)
        if self.accelerator.is_main_process:
            measured = ", ".join(f"{key} {value:.2f}" for key, value in results.items() if "perplex" in key)
            logger.info("saved %s (%s)", final, measured or "no --validation_files: no perplexity measured")
        return results


def main(argv: list[str] | None = None) -> None:
    set_native_libraries()  # before the first kernel
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    with exit_on_error(ValueError), _interruption_in_one_line(Path(args.output_dir)):
        trainer = LmTrainer(args)
        trainer.train()
    trainer.leave_process_group()


@contextmanager
def _interruption_in_one_line(output_dir: Path) -> Iterator[None]:
    """Ctrl-C ends the run with one line naming the newest checkpoint and how to continue from it (bit for bit), and
    exit status 130, not a traceback: a checkpoint is published whole, so none is half-written."""
    try:
        yield
    except KeyboardInterrupt:
        latest = latest_checkpoint(output_dir)
        then = (
            f"the newest checkpoint is {latest}: continue with the same command and --resume_from_checkpoint latest"
            if latest
            else "no checkpoint was saved: start again with --overwrite_output_dir"
        )
        print(f"interrupted: {then}", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":  # python -m elmo_transformers.training.pretraining.pretrain
    main()
