print("syncgate-headunit-sim: not built yet")
