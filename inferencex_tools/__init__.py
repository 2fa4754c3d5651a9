"""ixtool: CI and PR toolkit for InferenceX-style LLM inference benchmark repositories."""

__version__ = "0.1.0"
