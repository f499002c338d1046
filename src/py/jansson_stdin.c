/* Debian's libjansson.a is compiled position-independent for executables only (-fPIE): its json_loadf reads the C
 * library's `stdin` through a relocation that a shared library cannot carry. libperflab.so links a copy of the archive
 * in which that symbol is renamed pl_jansson_stdin (CMakeLists.txt, objcopy --redefine-sym), defined here as the same
 * FILE pointer once the library is loaded. */
#include <stdio.h>

FILE *pl_jansson_stdin;

__attribute__((constructor)) static void pl_jansson_stdin_init(void)
{
    pl_jansson_stdin = stdin;
}
