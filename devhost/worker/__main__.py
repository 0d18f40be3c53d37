from ._process import main

main()
