/* ccopy: the floor of a process in the middle. It starts the command in
   its arguments and copies bytes both ways (the client's stdin to the
   command's, the command's stdout to its own), with one poll(2) loop and
   no runtime; the command's stderr is inherited. BenchmarkRunAddedLatency
   builds it with the system's C compiler when there is one. */
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int put(int fd, const char *b, ssize_t n) {
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0)
			return -1;
		b += w;
		n -= w;
	}
	return 0;
}

int main(int argc, char **argv) {
	int in[2], out[2];
	if (argc < 2 || pipe(in) || pipe(out))
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		execv(argv[1], argv + 1);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	struct pollfd f[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
	static char buf[65536];
	for (;;) {
		if (poll(f, 2, -1) < 0)
			break;
		if (f[0].revents) {
			ssize_t n = read(0, buf, sizeof buf);
			if (n <= 0) {
				close(in[1]);
				f[0].fd = -1;
			} else if (put(in[1], buf, n))
				break;
		}
		if (f[1].revents) {
			ssize_t n = read(out[0], buf, sizeof buf);
			if (n <= 0 || put(1, buf, n))
				break;
		}
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}
