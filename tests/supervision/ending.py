"""A process that ends as asked, run under supervision.rank (tests/supervision/test_rank_watcher.py):

    python -m supervision.rank tests.supervision.ending exit CODE | raise TEXT | sleep
"""
import os
import sys
import time


def main() -> None:
    how = sys.argv[1]
    print(f"ending: {how}", flush=True)
    if how == "exit":
        os._exit(int(sys.argv[2]))  # no Python clean-up, no exception: as a crash in C would end it
    if how == "raise":
        raise RuntimeError(sys.argv[2])
    time.sleep(120)  # until killed


if __name__ == "__main__":
    main()
