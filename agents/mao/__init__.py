"""The Mao players: base-rules, Bayesian and oracle players, and the learned policies' features."""
