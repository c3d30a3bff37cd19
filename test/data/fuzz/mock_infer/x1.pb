
nopex1