static inline __attribute__((always_inline)) int sq(int x){return x*x;}
__attribute__((noinline)) int f(int x){return sq(x)+1;}
int main(int c,char**v){(void)v;return f(c);}
