"""Retrieval: embeddings, the three-stage search, feedback, calibration, evaluation."""
