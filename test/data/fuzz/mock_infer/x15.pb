
ensemblex15*

max_tokensINT32*