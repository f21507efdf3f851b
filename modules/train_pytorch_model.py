import shutil

from sdk.context import DistributedJob
from sdk.declarations import Bool, Choice, Float, ImageDirectory, Int, ModelDirectory, Module, Port, UntrainedModelDirectory
from sdk.formats import metrics, model
from sdk.layout import CHECKPOINT_FILE, DEVICES_DIR, WORK_DIR


class TrainPyTorchModel(Module):
    """Trains an image classifier (ResNet / DenseNet) and keeps the epoch with the lowest
    validation loss, with the class list and the inference transformation needed to score.
    Fine-tunes a trained model (of Train PyTorch Model, or a registered one) given as its
    Untrained model: its weights are the start, and a new classifier head learns other classes."""

    kind = "train_pytorch_model"
    uses_gpu = True  # at 1 x 1, it holds one of the machine's GPUs while it runs (supervision/gpus.py)
    label = "Train PyTorch Model"
    category = "Model Training"
    version = 1
    distributed = True
    metrics = ("learning_rate", "training_images_per_second", "training_loss", "training_error",
               "training_top1_accuracy", "validation_loss", "validation_top1_accuracy",
               "validation_top5_accuracy")
    metric_step = "epoch"
    # the port keeps its name (stored pipelines link to "untrained_model") and also takes a trained model
    inputs = [Port("Untrained model", UntrainedModelDirectory,
                   help="a model of ResNet or DenseNet; or a trained model (Train PyTorch Model, a registered "
                        "model) to fine-tune: its weights are the start, its classifier head is replaced when the "
                        "training dataset has other classes"),
              Port("Training dataset", ImageDirectory),
              Port("Validation dataset", ImageDirectory)]
    outputs = [Port("Trained model", ModelDirectory)]
    params = [
        Int("Epochs", default=5, min=0, min_exclusive=True, help="passes over the training dataset"),
        Int("Batch size", default=16, min=0, min_exclusive=True, help="images per training step (per process)"),
        Int("Warmup step number", default=0, min=0,
            help="steps over which the learning rate rises linearly from 0 to Learning rate"),
        Float("Learning rate", default=0.001, min=0, min_exclusive=True, help="SGD learning rate reached after warm-up; it then decays to 0 along a cosine over the epochs"),
        Int("Random seed", default=1, min=0, help="same seed, same data, one process: same model"),
        Int("Patience", default=3, min=0, min_exclusive=True,
            help="stop after this many epochs without a lower validation loss"),
        Int("Print frequency", default=10, min=0, help="log a training line every this many steps (0: per epoch only)"),
        Float("Checkpoint every (minutes)", default=10, min=0,
              help="besides each epoch's end, write the checkpoint this often in the middle of an epoch (0: at "
                   "epochs' ends only): a lost worker costs at most this much training, since the node runs again "
                   "from it (Max retries in Run settings)"),
        Bool("Sync BatchNorm", default=False,
             help="distributed runs (Run settings above 1 x 1): batch-norm layers normalise over the images of every "
                  "process together (the global batch), as one process with the global batch would, instead of over "
                  "each process's Batch size alone; one small all-reduce per layer and step (torchvision's --sync-bn)"),
        Bool("Freeze backbone", default=False,
             help="train only the classifier head (ResNet fc, DenseNet classifier): the rest of the model, batch-norm "
                  "statistics included, keeps the weights it starts with and serves as a fixed feature extractor "
                  "(the transfer-learning recipe of the PyTorch tutorial: \"ConvNet as fixed feature extractor\"); "
                  "for a pretrained or trained model"),
        Choice("Mixed precision", default="auto", choices=("auto", "bf16", "fp16", "off"),
               help="auto: bf16 on GPUs that support it (Ampere and newer), fp16 with a gradient scaler on older GPUs, "
                    "off on CPUs; the weights are kept and saved in float32 either way (torch.autocast)"),
    ]

    def run(self, ctx, untrained_model, training_dataset, validation_dataset):
        # refuse wrong inputs here, by port name, before any torch work
        model.read_start(untrained_model, self.label, "Untrained model")
        out = ctx.output_dir("trained_model")
        work = ctx.node_dir / WORK_DIR
        stop_file = work / "STOP"  # created by the designer when a sweep's policy ends this trial early
        # a checkpoint there: this node's earlier attempt was lost (its worker killed, a machine gone), and
        # the training goes on from its last epoch (the designer brought it back from the store)
        checkpoint = work / CHECKPOINT_FILE
        argv = [*training_argv(untrained_model.path, training_dataset.path, validation_dataset.path, out, ctx.params,
                               work_dir=work), "--label", self.label, "--stop-file", str(stop_file),
                "--devices-dir", str(ctx.node_dir / DEVICES_DIR),
                *(["--resume", str(checkpoint)] if checkpoint.is_file() else [])]
        if ctx.world_size == 1:
            from training import train

            info = train.main(train.get_args_parser().parse_args(argv), _ContextReporter(ctx))
        else:  # the same main(args) under torchrun in every process, started by the designer's workers
            metrics_file = out / metrics.METRICS_FILE  # rank 0 appends; relayed as this node's metrics while it runs
            # a rank that dies restarts every rank, each going on from the last checkpoint (--auto-resume)
            ctx.launch_distributed(DistributedJob("training.train", [*argv, "--auto-resume"], metrics_file=metrics_file,
                                                  gpu_argv=["--device", "cuda"], cpu_argv=["--device", "cpu"],
                                                  stop_file=stop_file, max_restarts=ctx.run_settings["max_retries"]))
            metrics_file.unlink(missing_ok=True)
            info = model.read_info(out)
        shutil.rmtree(work, ignore_errors=True)  # the checkpoint only serves an interrupted run
        start = {"fine_tuned_from": info["fine_tuned_from"]} if info.get("fine_tuned_from") else {}
        ctx.set_meta("trained_model", model_name=info.get("model_name"), classes=info["classes"],
                     best_epoch=info["best_epoch"], validation_loss=info["validation_loss"],
                     validation_top1_accuracy=info["validation_top1_accuracy"], **start)


def training_argv(model_dir, train_dir, val_dir, output_dir, params: dict, work_dir="", threads: int = 0) -> list[str]:
    """The command line of training.train's `main` for the parameters of this module (in-process or torchrun)."""
    return ["--model-dir", str(model_dir), "--train-dir", str(train_dir), "--val-dir", str(val_dir),
            "--output-dir", str(output_dir), "--work-dir", str(work_dir),
            "--epochs", str(params["epochs"]), "--batch-size", str(params["batch_size"]),
            "--warmup-steps", str(params["warmup_step_number"]), "--lr", repr(float(params["learning_rate"])),
            "--seed", str(params["random_seed"]), "--patience", str(params["patience"]),
            "--print-freq", str(params["print_frequency"]), "--threads", str(threads),
            "--checkpoint-minutes", repr(float(params.get("checkpoint_every_minutes", 10))),
            *(["--sync-bn"] if params.get("sync_batchnorm") else []),
            *(["--freeze-backbone"] if params.get("freeze_backbone") else []),
            "--amp", str(params.get("mixed_precision") or "auto")]


class _ContextReporter:
    """train.main's log lines and metrics, into the node's log and metric events."""

    def __init__(self, ctx):
        self.ctx = ctx

    def log(self, text):
        self.ctx.log(text)

    def log_own(self, text):
        self.ctx.log(text)

    def metric(self, name, value, step, steps=None):
        self.ctx.metric(name, value, step, steps)

    def check_cancelled(self):
        self.ctx.check_cancelled()

    def stop_requested(self):
        return self.ctx.stop_requested()
