
vllmx16