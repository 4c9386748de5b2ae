"""Use cases: plain functions taking ports as arguments."""
