"""Where runs come from: the numpy replay and the importers of real accelerator artifacts, behind one door."""
