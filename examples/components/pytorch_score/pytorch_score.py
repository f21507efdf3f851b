# The original's entry script for this model (in the shape of its sample pytorch_score.py), run
# unchanged by a designer endpoint: init() once when the endpoint is loaded, run(input_data) per
# request with the request's body as text; what it returns is the JSON answer.
#
#   curl -X POST <scoring URL> -H 'Authorization: Bearer <key>' -H 'Content-Type: application/json' \
#        -d '{"data": [[1.0, 1.0, -1.0, 0.0]]}'
#   {"label": "chicken", "probability": "0.97..."}
import json
import os

import torch
import torch.nn as nn


def init():
    global model
    # AZUREML_MODEL_DIR is the registered version's folder
    model_path = os.path.join(os.getenv('AZUREML_MODEL_DIR'), 'model.pt')
    model = torch.load(model_path, map_location=lambda storage, loc: storage)
    model.eval()


def run(input_data):
    input_data = torch.tensor(json.loads(input_data)['data'])

    # get prediction
    with torch.no_grad():
        output = model(input_data)
        classes = ['chicken', 'turkey']
        softmax = nn.Softmax(dim=1)
        pred_probs = softmax(output).numpy()[0]
        index = torch.argmax(output, 1)

    result = {"label": classes[index], "probability": str(pred_probs[index])}
    return result
