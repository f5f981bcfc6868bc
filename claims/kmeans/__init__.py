"""Paper K: k-means in high dimension, Lloyd versus Hartigan (claims K1-K3)."""
