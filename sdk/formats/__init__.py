"""The on-disk format of each port type, with its one reader and one writer.

Every output port folder holds a `_meta.yaml` (formats/meta.py) naming its port type, beside the
files of that type:

    image_directory.py     ImageDirectory            index.csv + images/
    transformation.py      TransformationDirectory   transform.json (a recipe of steps)
    untrained_model.py     UntrainedModelDirectory   model.yaml (+ initial_state.pt)
    model.py               ModelDirectory            model.yaml + model.pt
    scored_dataset.py      ScoredDataset             scored.parquet + scored.csv
    evaluation.py          EvaluationResults         evaluation.json + per-class and confusion tables
    onnx_model.py          OnnxModel                 model.onnx + preprocessing.json
    custom_model.py        ModelDirectory, OnnxModel a script's own model folder (torch.save, ONNX, MLflow): its format
    metrics.py             the metrics file a training process appends to

A reader takes the `InputArtifact` a module receives (with the module's label and the port's
label, to name them when it refuses a directory of another type); a writer takes the module's
context and the output port's name. Plain Python (+ PyYAML; pandas inside the functions that
need it): no torch here.
"""
