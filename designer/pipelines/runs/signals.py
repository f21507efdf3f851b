"""What other parts of the app may react to without the run logic knowing them."""
from django.dispatch import Signal

# sent with `run_id` once the transaction that finished a run has committed (a sweep then tells
# its study how the trial went and starts the next trials: sweeps.py)
run_finished = Signal()
