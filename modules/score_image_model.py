from sdk.declarations import ImageDirectory, ModelDirectory, Module, Port, ScoredDataset
from sdk.errors import InvalidDatasetError
from sdk.formats import image_directory as imagedir
from sdk.formats import scored_dataset
from sdk.formats.transformation import INFERENCE

BATCH = 64


class ScoreImageModel(Module):
    """Predicts the class of every image of a dataset with a trained model: one
    `Scored Probabilities_<class>` column per class and `Scored Labels`, beside the image and its
    true label (Parquet, with a CSV copy)."""

    kind = "score_image_model"
    uses_gpu = True  # at 1 x 1, it holds one of the machine's GPUs while it runs (supervision/gpus.py)
    label = "Score Image Model"
    category = "Model Scoring & Evaluation"
    inputs = [Port("Trained model", ModelDirectory), Port("Dataset", ImageDirectory)]
    outputs = [Port("Scored dataset", ScoredDataset)]
    params = []

    def run(self, ctx, trained_model, dataset):
        from training import devices, loading, models  # noqa: I001 - before torch: see training/__init__.py
        from training.data import ImageDirDataset
        from training.transforms import build_transform

        import torch

        model, info = models.load_trained(trained_model, self.label)
        images = imagedir.read(dataset, self.label, "Dataset")
        if not images.items:
            raise InvalidDatasetError(f"{self.label}: the Dataset has no images")
        classes = list(info["classes"])
        # the dataset's own recorded transformation (random steps dropped), else the model's
        recipe, source = (images.transforms, "the Dataset's") if images.transforms else (info.get("transforms"), "the model's")
        normalize = info.get("normalize")
        transform = build_transform(recipe, INFERENCE, tuple(map(tuple, normalize)) if normalize else None)
        ctx.log(f"scoring {len(images.items)} image(s) with {info['model_name']} ({len(classes)} classes), "
                f"{source} transformation in inference mode")
        # the worker's GPU when it has one (fp32: the scores are the model's, not a faster model's)
        device = devices.choose(devices.AUTO)
        devices.setup(device)
        ctx.log(f"scoring on {devices.describe(device)}")
        model = model.to(device, memory_format=devices.memory_format(device))
        workers = devices.loader_workers(-1, device)
        loader = torch.utils.data.DataLoader(ImageDirDataset(images, classes, transform), batch_size=BATCH,
                                             num_workers=workers, pin_memory=device.type == "cuda")
        probabilities = []
        with torch.inference_mode():
            for batch, _ in loading.iterate(loader):  # its loading processes, also in a Celery pool process
                ctx.check_cancelled()  # a safe point: between two batches
                batch = batch.to(device, non_blocking=True).contiguous(memory_format=devices.memory_format(device))
                probabilities.append(torch.softmax(model(batch).float(), dim=1).cpu())
        table = scored_dataset.table([str(images.abspath(p)) for p, _ in images.items],
                                     [label for _, label in images.items], classes, torch.cat(probabilities).numpy())
        scored_dataset.write(ctx, "scored_dataset", table, classes=classes, count=len(table), labeled=images.labeled,
                             model_name=info["model_name"])
        if images.labeled:
            accuracy = float((table[scored_dataset.SCORED_LABELS] == table[scored_dataset.LABEL]).mean())
            ctx.log(f"accuracy on this dataset: {100 * accuracy:.2f}%")
