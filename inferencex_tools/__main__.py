from inferencex_tools.cli.entry import main

if __name__ == "__main__":
    main()
