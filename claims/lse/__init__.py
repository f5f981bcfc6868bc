"""Paper L: Improved Stochastic Optimization of LogSumExp (claims L1-L3 here; L4-L6 not yet exercised)."""
