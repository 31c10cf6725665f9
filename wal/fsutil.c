/* fsutil.c -- see fsutil.h. */
#include "wal/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int fs_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}
