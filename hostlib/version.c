/*
 * version.c — inccl_version(): the version this library was built as
 * (INCCL_VERSION of the inccl.h it was compiled with), so a program can
 * compare the header it was built with and the library it runs with.
 */
#include "inccl.h"

int inccl_version(void)
{
	return INCCL_VERSION;
}
