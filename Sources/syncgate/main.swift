print("syncgate")
