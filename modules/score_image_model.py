from modules.base import (
    ImageDirectory,
    InvalidDatasetError,
    ModelDirectory,
    Module,
    Port,
    ScoredDataset,
)

SCORED_FILE = "scored.parquet"
SCORED_CSV = "scored.csv"
BATCH = 64


class ScoreImageModel(Module):
    """Predicts the class of every image of a dataset with a trained model: one
    `Scored Probabilities_<class>` column per class and `Scored Labels`, beside the image and its
    true label (Parquet, with a CSV copy)."""

    kind = "score_image_model"
    label = "Score Image Model"
    category = "Model Scoring & Evaluation"
    inputs = [Port("Trained model", ModelDirectory), Port("Dataset", ImageDirectory)]
    outputs = [Port("Scored dataset", ScoredDataset)]
    params = []

    def run(self, ctx, trained_model, dataset):
        from training import models  # noqa: I001 - before torch: see training/__init__.py
        from training.data import ImageDirDataset

        import pandas as pd
        import torch

        from modules import _imagedir
        from modules import _transforms as T

        model, info = models.load_trained(trained_model, self.label)
        images = _imagedir.read(dataset, self.label, "Dataset")
        if not images.items:
            raise InvalidDatasetError(f"{self.label}: the Dataset has no images")
        classes = list(info["classes"])
        # the dataset's own recorded transformation (random steps dropped), else the model's
        recipe, source = (images.transforms, "the Dataset's") if images.transforms else (info.get("transforms"), "the model's")
        normalize = info.get("normalize")
        transform = T.build_transform(recipe, T.INFERENCE, tuple(map(tuple, normalize)) if normalize else None)
        ctx.log(f"scoring {len(images.items)} image(s) with {info['model_name']} ({len(classes)} classes), "
                f"{source} transformation in inference mode")
        loader = torch.utils.data.DataLoader(ImageDirDataset(images, classes, transform), batch_size=BATCH)
        probabilities = []
        with torch.inference_mode():
            for batch, _ in loader:
                probabilities.append(torch.softmax(model(batch), dim=1))
                ctx.check_cancelled()
        probs = torch.cat(probabilities).numpy()
        table = pd.DataFrame({"Image": [str(images.abspath(p)) for p, _ in images.items],
                              "Label": [label for _, label in images.items]})
        for i, c in enumerate(classes):
            table[f"Scored Probabilities_{c}"] = probs[:, i]
        table["Scored Labels"] = [classes[i] for i in probs.argmax(axis=1)]
        out = ctx.output_dir("scored_dataset")
        table.to_parquet(out / SCORED_FILE, index=False)
        table.to_csv(out / SCORED_CSV, index=False)
        labeled = images.labeled
        ctx.set_meta("scored_dataset", classes=classes, count=len(table), labeled=labeled, file=SCORED_FILE,
                     model_name=info["model_name"])
        if labeled:
            accuracy = float((table["Scored Labels"] == table["Label"]).mean())
            ctx.log(f"accuracy on this dataset: {100 * accuracy:.2f}%")
