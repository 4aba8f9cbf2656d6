"""Synthetic models (``rbd.models``): serial chains, binary trees and random trees."""

from .synthetic import binary_tree
from .synthetic import random_tree
from .synthetic import serial_chain

__all__ = ["binary_tree", "random_tree", "serial_chain"]
