"""Image classification with DistributedDataParallel, the process group read from the environment.

Every process of the job runs this script with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK,
LOCAL_RANK and NODE_RANK set (the designer does it for Node count x Process count per node, as
torchrun does): `init_process_group("gloo", init_method="env://")` reads them. A
DistributedSampler gives each process its share of the images; DDP averages the gradients; the
loss and accuracy are summed over the processes; rank 0 reports them and writes the
ModelDirectory (model.pt + model.yaml) that Score Image Model reads.

Metrics use the plain stdout form, for scripts that import nothing of the designer:

    ##metric training_loss=0.4213 training_accuracy=0.91 step=3

By hand, two processes on this machine:

    PYTHONPATH=. torchrun --nproc-per-node 2 examples/components/ddp_train/ddp_train.py \\
        --data_dir TRAIN --val_dir VAL --epochs 2 --image_size 32 --output_dir outputs
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, Subset
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, models, transforms

from sdk import stop_requested
from sdk.formats import image_directory
from sdk.formats import model as model_format
from sdk.formats.transformation import make_recipe, step

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
ENVIRONMENT = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "WORLD_SIZE", "RANK", "LOCAL_RANK")


class Images(Dataset):
    """An ImageDirectory (what Convert to Image Directory and Split Image Directory write) or a
    plain ImageFolder tree: (RGB image tensor, class index) pairs."""

    def __init__(self, path, image_size, classes=None, port="Training data"):
        if image_directory.is_one(path):
            found = image_directory.read_path(path, "DDP Train (script)", port)
            found.require_labels("DDP Train (script)", port)
            self.classes = list(classes or found.classes)
            items = [(str(found.abspath(p)), label) for p, label in found.items]
        else:
            folder = datasets.ImageFolder(path)
            self.classes = list(classes or folder.classes)
            items = [(p, folder.classes[i]) for p, i in folder.samples]
        unknown = sorted({label for _, label in items} - set(self.classes))
        if unknown:
            raise SystemExit(f"the {port} ({path}) has classes that are not among the training classes: "
                             f"{', '.join(unknown)}")
        index = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(p, index[label]) for p, label in items]
        self.transform = transforms.Compose([transforms.Resize(image_size), transforms.CenterCrop(image_size),
                                             transforms.ToTensor(), transforms.Normalize(MEAN, STD)])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        return self.transform(datasets.folder.default_loader(path)), target


def summed(*values):
    """The values summed over every process."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def run_epoch(model, loader, criterion, optimizer=None):
    """One pass (training when an optimizer is given); (loss, accuracy) over every process."""
    model.train(optimizer is not None)
    loss_sum = correct = seen = 0.0
    with torch.set_grad_enabled(optimizer is not None):
        for images, targets in loader:
            output = model(images)
            loss = criterion(output, targets)
            if optimizer is not None:
                optimizer.zero_grad()
                loss.backward()  # DDP averages the gradients of every process here
                optimizer.step()
            loss_sum += loss.item() * len(targets)
            correct += (output.argmax(1) == targets).sum().item()
            seen += len(targets)
    loss_sum, correct, seen = summed(loss_sum, correct, seen)
    return loss_sum / max(seen, 1), correct / max(seen, 1)


def stop_everywhere(rank):
    """Rank 0's answer to stop_requested(), shared: ranks on other machines may not see the request."""
    flag = torch.tensor([1 if rank == 0 and stop_requested() else 0])
    dist.broadcast(flag, 0)
    return bool(flag.item())


def save(model, classes, args, best, history):
    os.makedirs(args.output_dir, exist_ok=True)
    torch.save(model.state_dict(), model_format.weights(args.output_dir))
    recipe = make_recipe([step("resize", size=args.image_size), step("center_crop", size=args.image_size)])
    model_format.write(args.output_dir, model_name=args.arch, classes=classes, transforms=recipe,
                       normalize=[MEAN, STD], best_epoch=best["epoch"], epochs_run=len(history),
                       validation_loss=best["validation_loss"], validation_top1_accuracy=best["validation_accuracy"],
                       world_size=dist.get_world_size(), history=history)
    print(f"rank 0 wrote the model of epoch {best['epoch']} to {args.output_dir}", flush=True)


def train(args, rank, world):
    train_set = Images(args.data_dir, args.image_size)
    val_set = Images(args.val_dir or args.data_dir, args.image_size, train_set.classes,
                     "Validation data" if args.val_dir else "Training data")
    train_sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    # a last batch of one image is dropped: batch norm cannot train on it
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler,
                              drop_last=len(train_sampler) % args.batch_size == 1)
    # validation: every image once, one shard per process (DistributedSampler would repeat some)
    val_loader = DataLoader(Subset(val_set, range(rank, len(val_set), world)), batch_size=args.batch_size)
    print(f"rank {rank} of {world}: {len(train_sampler)} of {len(train_set)} training images, "
          f"{len(train_set.classes)} classes", flush=True)

    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    net = models.get_model(args.arch, weights=None, num_classes=len(train_set.classes))
    model = DistributedDataParallel(net)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum)
    best, history, best_state = None, [], None
    for epoch in range(1, args.epochs + 1):
        started = time.perf_counter()
        train_sampler.set_epoch(epoch)  # a different shuffle every epoch, the same on every rank
        training_loss, training_accuracy = run_epoch(model, train_loader, criterion, optimizer)
        for buffer in net.buffers():  # rank 0's batch-norm statistics everywhere: the model rank 0 keeps
            dist.broadcast(buffer, 0)
        validation_loss, validation_accuracy = run_epoch(net, val_loader, criterion)  # no DDP: shards differ
        figures = {"epoch": epoch, "training_loss": training_loss, "training_accuracy": training_accuracy,
                   "validation_loss": validation_loss, "validation_accuracy": validation_accuracy}
        history.append(figures)
        print(f"rank {rank}: epoch {epoch}/{args.epochs} training loss {training_loss:.4f} accuracy "
              f"{training_accuracy:.4f}, validation loss {validation_loss:.4f} accuracy {validation_accuracy:.4f} "
              f"({time.perf_counter() - started:.1f} s)", flush=True)
        if rank == 0:  # the designer reads rank 0's lines
            print(f"##metric training_loss={training_loss:.6g} training_accuracy={training_accuracy:.6g} "
                  f"validation_loss={validation_loss:.6g} validation_accuracy={validation_accuracy:.6g} "
                  f"step={epoch} steps={args.epochs}", flush=True)
        if best is None or validation_accuracy > best["validation_accuracy"]:
            best = figures
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        if epoch < args.epochs and stop_everywhere(rank):
            print(f"rank {rank}: stopped after epoch {epoch}: the designer asked", flush=True)
            break
    if rank == 0:
        net.load_state_dict(best_state)
        save(net, train_set.classes, args, best, history)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data_dir", required=True, help="training images")
    p.add_argument("--val_dir", default="", help="validation images (default: the training images)")
    p.add_argument("--output_dir", required=True, help="where rank 0 writes the model")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch_size", type=int, default=16, help="images per step and process")
    p.add_argument("--learning_rate", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--image_size", type=int, default=32)
    p.add_argument("--arch", default="resnet18", help="a torchvision model name")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    print("environment: " + " ".join(f"{k}={os.environ.get(k)}" for k in ENVIRONMENT), flush=True)
    dist.init_process_group("gloo", init_method="env://")  # MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"process group: rank {rank} of {world} (local rank {os.environ.get('LOCAL_RANK')}, "
          f"node {os.environ.get('NODE_RANK')}), backend {dist.get_backend()}", flush=True)
    try:
        train(args, rank, world)
        dist.barrier()  # nobody leaves before rank 0 has written the model
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
