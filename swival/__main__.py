from swival.cli import main

main()
