from hilbench.cli import main

main()
