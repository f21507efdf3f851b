"""training.train with a record of what each process did (tests/training/test_distributed_recipe.py):

    torchrun ... -m supervision.rank tests.training.traced_train TRACE_DIR TRAIN-ARGS...

The real `training.train.main`, observed from outside: the dataset items each epoch's training
and validation actually read (ImageDirDataset.__getitem__), the torch seed in force while the rank
trains, a checksum of its weights after each epoch, and, on rank 0, the validation figures of its
model over the whole validation set computed here alone (no other process involved). Written to
TRACE_DIR/rank-<RANK>.json. Each rank gets an output and work folder of its own
(<dir>/rank-<RANK>), so that whatever rank 1 writes is visible.
"""
import json
import os
import sys
from pathlib import Path

import torch

from training import data, train


def main() -> None:
    trace_dir, argv = Path(sys.argv[1]), sys.argv[2:]
    rank = int(os.environ.get("RANK", "0"))
    args = train.get_args_parser().parse_args(argv)
    args.output_dir = str(Path(args.output_dir) / f"rank-{rank}")
    if args.work_dir:
        args.work_dir = str(Path(args.work_dir) / f"rank-{rank}")
    epochs: list[dict] = []
    reads: list[int] = []

    getitem = data.ImageDirDataset.__getitem__

    def recording_getitem(self, i):
        reads.append(int(i))
        return getitem(self, i)

    one_epoch, evaluate = train.train_one_epoch, train.evaluate

    def traced_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, lr_scheduler, reporter, *more):
        reads.clear()
        seed = torch.initial_seed()
        figures = one_epoch(model, criterion, optimizer, data_loader, device, epoch, args, lr_scheduler, reporter, *more)
        net = getattr(model, "module", model)
        epochs.append({"epoch": epoch, "seed": seed, "train": list(reads), "batch_size": data_loader.batch_size,
                       "steps": len(data_loader), "weights": sum(float(p.double().sum()) for p in net.parameters())})
        return figures

    def traced_evaluate(model, criterion, data_loader, device, num_classes, *more):
        reads.clear()
        figures = evaluate(model, criterion, data_loader, device, num_classes, *more)
        epochs[-1]["val"] = list(reads)
        epochs[-1]["val_size"] = len(data_loader.dataset)
        if rank == 0:
            epochs[-1]["whole_val"] = _whole_set(getattr(model, "module", model), criterion, data_loader.dataset)
        return figures

    data.ImageDirDataset.__getitem__ = recording_getitem
    train.train_one_epoch, train.evaluate = traced_one_epoch, traced_evaluate
    try:
        train.main(args)
    finally:
        trace_dir.mkdir(parents=True, exist_ok=True)
        (trace_dir / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "epochs": epochs}))


def _whole_set(net, criterion, dataset) -> dict:
    """Validation loss and top-1 accuracy of `net` over every item, in this process alone."""
    net.eval()
    loss_sum = correct = 0.0
    with torch.inference_mode():
        for images, targets in torch.utils.data.DataLoader(dataset, batch_size=len(dataset)):
            output = net(images)
            loss_sum += criterion(output, targets).item() * len(targets)
            correct += (output.argmax(1) == targets).sum().item()
    return {"validation_loss": loss_sum / len(dataset), "validation_top1_accuracy": correct / len(dataset)}


if __name__ == "__main__":
    main()
