"""`edgeway bench ...`: benchmarks that print their figures and ratios, measured in one run."""
