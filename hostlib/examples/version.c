/*
 * version.c — which libinccl a program was built against, and which one runs.
 *
 *   cc -o version version.c $(pkg-config --cflags --libs inccl)
 *   ./version
 *
 * Prints "header X.Y.Z, library X.Y.Z" and exits 0 when the library's major
 * version is the header's and its minor version at least the header's (what
 * the SONAME promises: every call of this header is there), else 1.
 */
#include <stdio.h>

#include <inccl.h>

int main(void)
{
	int lib = inccl_version();

	printf("header %d.%d.%d, library %d.%d.%d\n", INCCL_VERSION_MAJOR, INCCL_VERSION_MINOR, INCCL_VERSION_PATCH,
	       lib / 10000, lib / 100 % 100, lib % 100);
	if (lib / 10000 != INCCL_VERSION_MAJOR || lib / 100 % 100 < INCCL_VERSION_MINOR) {
		fprintf(stderr, "version: libinccl %d does not provide the calls of header %d\n", lib, INCCL_VERSION);
		return 1;
	}
	return 0;
}
