HeadUnitSimulator.main()
