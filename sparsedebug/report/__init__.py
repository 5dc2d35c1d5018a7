"""Documents built from run records: the review memo, the deployment report, the CI gate."""
