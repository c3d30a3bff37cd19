

vllm_modelx4*

text_inputBYTES