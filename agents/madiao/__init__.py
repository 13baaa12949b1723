"""The Madiao players: the scripted heuristics, the search player and the learned policy's features."""
