from hilbench.launch import main

main()
