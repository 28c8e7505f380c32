"""Running an evaluation: the engine, the matrix of runs, providers and their retry policy,
batch APIs, the model catalog and the estimate."""
