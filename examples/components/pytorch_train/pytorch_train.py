# Adapted from the Azure ML tutorial "Train PyTorch models at scale" (pytorch_train.py), itself
# adapted from https://pytorch.org/tutorials/beginner/transfer_learning_tutorial.html
# (Copyright (c) 2017, PyTorch contributors; BSD license).
"""Transfer learning with ResNet-18: the tutorial's pytorch_train.py, run as a designer component.

The same functions as the tutorial (load_data, train_model, fine_tune_model, main) and the same
arguments (--data_dir, --num_epochs, --output_dir, --learning_rate, --momentum), with what the
designer adds:

- the data folders are ImageDirectory outputs (Convert to Image Directory, Split Image
  Directory: an index.csv of path,label), or plain ImageFolder trees (<dir>/<class>/<image>, or
  the tutorial's <dir>/train and <dir>/val) when run by hand;
- every epoch's loss and accuracy go to the node's Metrics pane with `log_metric` (a no-op
  outside the designer), and the script stops after an epoch when `stop_requested()` (a sweep's
  early termination);
- the output is a ModelDirectory (model.pt + model.yaml) that Score Image Model reads;
- no download: pretrained weights only when they are already in the torch cache.

By hand, from the project's root (so that `sdk` imports):

    PYTHONPATH=. python examples/components/pytorch_train/pytorch_train.py \\
        --data_dir hymenoptera_data --num_epochs 2 --image_size 64 --output_dir outputs
"""
import argparse
import copy
import os
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torchvision import datasets, models, transforms

from sdk import log_metric, stop_requested
from sdk.formats import image_directory
from sdk.formats import model as model_format
from sdk.formats.transformation import make_recipe, step

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class IndexedImages(torch.utils.data.Dataset):
    """An ImageDirectory as an ImageFolder: .classes, .samples, (image, class index) items."""

    def __init__(self, path, transform, classes=None, port="Training data"):
        images = image_directory.read_path(path, "PyTorch Train (script)", port)
        images.require_labels("PyTorch Train (script)", port)
        self.classes = list(classes or images.classes)
        unknown = sorted({label for _, label in images.items} - set(self.classes))
        if unknown:
            raise SystemExit(f"the {port} ({path}) has classes that are not among the training classes: "
                             f"{', '.join(unknown)}")
        index = {c: i for i, c in enumerate(self.classes)}
        self.samples = [(str(images.abspath(p)), index[label]) for p, label in images.items]
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        return self.transform(datasets.folder.default_loader(path)), target  # RGB, as ImageFolder


def image_folder(path, transform, classes=None, port="Training data"):
    """An ImageDirectory (index.csv) or a plain ImageFolder tree."""
    if image_directory.is_one(path):
        return IndexedImages(path, transform, classes, port)
    return datasets.ImageFolder(path, transform)


def load_data(data_dir, val_dir, image_size, batch_size):
    """Load the train/val data: --data_dir (and --val_dir), or the tutorial's <data_dir>/train and /val."""
    data_transforms = {
        "train": transforms.Compose([
            transforms.RandomResizedCrop(image_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]),
        "val": transforms.Compose([
            transforms.Resize(image_size * 256 // 224),
            transforms.CenterCrop(image_size),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ]),
    }
    if not val_dir and os.path.isdir(os.path.join(data_dir, "train")) and not image_directory.is_one(data_dir):
        data_dir, val_dir = os.path.join(data_dir, "train"), os.path.join(data_dir, "val")
    train_set = image_folder(data_dir, data_transforms["train"])
    if val_dir:
        val_set = image_folder(val_dir, data_transforms["val"], train_set.classes, "Validation data")
    else:
        print("no validation data: validating on the training data")
        val_set = image_folder(data_dir, data_transforms["val"], train_set.classes)
    image_datasets = {"train": train_set, "val": val_set}
    # a last training batch of one image is dropped: batch norm cannot train on it
    lone = len(train_set) % batch_size == 1
    dataloaders = {x: torch.utils.data.DataLoader(image_datasets[x], batch_size=batch_size, shuffle=(x == "train"),
                                                  num_workers=0, drop_last=(x == "train" and lone))
                   for x in ["train", "val"]}
    dataset_sizes = {"train": len(train_set) - lone, "val": len(val_set)}
    class_names = train_set.classes
    return dataloaders, dataset_sizes, class_names


def train_model(model, criterion, optimizer, scheduler, num_epochs, dataloaders, dataset_sizes):
    """Train the model; returns it with the weights of its best validation epoch, and the history."""
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best = {"epoch": 0, "val_acc": -1.0, "val_loss": float("inf")}
    history = []

    for epoch in range(1, num_epochs + 1):
        print(f"Epoch {epoch}/{num_epochs}")
        print("-" * 10)
        figures = {"epoch": epoch}
        # Each epoch has a training and validation phase
        for phase in ["train", "val"]:
            model.train() if phase == "train" else model.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                # track history if only in train
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data).item()
            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects / dataset_sizes[phase]
            print(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}", flush=True)
            name = "training" if phase == "train" else "validation"
            figures[f"{name}_loss"], figures[f"{name}_accuracy"] = epoch_loss, epoch_acc
            # the designer's Metrics pane (and a sweep's metric): one point per epoch
            log_metric(f"{name}_loss", epoch_loss, epoch, steps=num_epochs)
            log_metric(f"{name}_accuracy", epoch_acc, epoch, steps=num_epochs)
            # deep copy the model
            if phase == "val" and epoch_acc > best["val_acc"]:
                best = {"epoch": epoch, "val_acc": epoch_acc, "val_loss": epoch_loss}
                best_model_wts = copy.deepcopy(model.state_dict())
        log_metric("best_val_acc", best["val_acc"], epoch, steps=num_epochs)
        history.append(figures)
        print(flush=True)
        if epoch < num_epochs and stop_requested():
            print(f"stopped after epoch {epoch} of {num_epochs}: the designer asked (a sweep's early termination)")
            break

    time_elapsed = time.time() - since
    print(f"Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s")
    print(f"Best val Acc: {best['val_acc']:4f} (epoch {best['epoch']})")
    model.load_state_dict(best_model_wts)  # load best model weights
    return model, best, history


def resnet18(pretrained):
    """ResNet-18, with ImageNet weights only when they are in the torch cache (never downloaded);
    (the model, whether it starts from them)."""
    weights = models.ResNet18_Weights.DEFAULT
    cached = os.path.join(torch.hub.get_dir(), "checkpoints", os.path.basename(weights.url))
    if pretrained and os.path.isfile(cached):
        print(f"starting from the pretrained weights {weights} ({cached})")
        return models.resnet18(weights=weights), True
    if pretrained:
        print(f"the pretrained weights {weights} are not in the torch cache ({cached}): starting from random weights")
    return models.resnet18(weights=None), False


def fine_tune_model(num_epochs, data_dir, learning_rate, momentum, val_dir=None, image_size=224, batch_size=4,
                    pretrained=True):
    """Load a pretrained model and reset the final fully connected layer."""
    dataloaders, dataset_sizes, class_names = load_data(data_dir, val_dir, image_size, batch_size)
    print(f"{dataset_sizes['train']} training and {dataset_sizes['val']} validation images, "
          f"{len(class_names)} classes: {', '.join(class_names)}")
    model_ft, pretrained = resnet18(pretrained)
    num_ftrs = model_ft.fc.in_features
    model_ft.fc = nn.Linear(num_ftrs, len(class_names))
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    model_ft = model_ft.to(device)
    criterion = nn.CrossEntropyLoss()
    # Observe that all parameters are being optimized
    optimizer_ft = optim.SGD(model_ft.parameters(), lr=learning_rate, momentum=momentum)
    # Decay LR by a factor of 0.1 every 7 epochs
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
    model, best, history = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs,
                                       dataloaders, dataset_sizes)
    return model, class_names, best, history, pretrained


def save_model(model, class_names, best, history, output_dir, image_size, pretrained):
    """A ModelDirectory: the weights, and model.yaml with the inference transform Score Image Model applies."""
    os.makedirs(output_dir, exist_ok=True)
    torch.save(model.cpu().state_dict(), model_format.weights(output_dir))
    recipe = make_recipe([step("resize", size=image_size * 256 // 224), step("center_crop", size=image_size)])
    model_format.write(output_dir, model_name="resnet18", classes=class_names, transforms=recipe,
                       normalize=[MEAN, STD], family="resnet", pretrained=pretrained, best_epoch=best["epoch"],
                       epochs_run=len(history), validation_loss=best["val_loss"],
                       validation_top1_accuracy=best["val_acc"], history=history)
    print(f"saved the weights of epoch {best['epoch']} to {output_dir}")


def main():
    print("Torch version:", torch.__version__)
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", type=str, required=True, help="directory of training data")
    parser.add_argument("--val_dir", type=str, default="", help="directory of validation data")
    parser.add_argument("--num_epochs", type=int, default=25, help="number of epochs to train")
    parser.add_argument("--output_dir", type=str, default="outputs", help="output directory")
    parser.add_argument("--learning_rate", type=float, default=0.001, help="learning rate")
    parser.add_argument("--momentum", type=float, default=0.9, help="momentum")
    parser.add_argument("--batch_size", type=int, default=4, help="images per step")
    parser.add_argument("--image_size", type=int, default=224, help="side of the square crop the model sees")
    parser.add_argument("--pretrained", type=lambda v: v.lower() in ("true", "1", "yes"), default=True,
                        help="true: start from ImageNet weights, if they are in the torch cache")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)

    print("data directory is: " + args.data_dir)
    # the tutorial logged lr and momentum as metrics; the designer shows parameters in the pane
    print(f"learning rate {args.learning_rate}, momentum {args.momentum}")
    model, class_names, best, history, pretrained = fine_tune_model(args.num_epochs, args.data_dir, args.learning_rate,
                                                        args.momentum, args.val_dir, args.image_size,
                                                        args.batch_size, args.pretrained)
    save_model(model, class_names, best, history, args.output_dir, args.image_size, pretrained)


if __name__ == "__main__":
    main()
