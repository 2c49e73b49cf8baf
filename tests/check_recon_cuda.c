/* check_recon_cuda.c: placeholder, filled below */
int main(void) { return 77; }
