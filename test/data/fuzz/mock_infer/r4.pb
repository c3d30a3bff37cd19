
ensembler4*(

text_inputBYTES*Btyped prompt here*

max_tokensUINT32*"*
streamBOOL*
