"""Toy kernel the loop tests optimize. run() is the timed call; compute() is what the gate checks."""

import time

DELAY_S = 0.02


def compute(xs):
    return [2 * x for x in xs]


def run():
    time.sleep(DELAY_S)
    return compute(range(10))
