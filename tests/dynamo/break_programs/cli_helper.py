"""Imported by cli_frequency.py from the script's own directory."""
import numpy as np


def normalize(v):
    return (v - v.mean()) / (v.std() + 1e-12)
