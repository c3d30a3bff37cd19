
ensemble2x2