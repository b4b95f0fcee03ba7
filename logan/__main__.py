from logan.cli import main

main()
