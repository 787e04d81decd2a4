/* SPDX-License-Identifier: MIT */
/*
 * wr-mpi MODE [ARG]: an MPI program, as worldrun's users bring them
 * (wr-mpi built with MPICH, wr-ompi with Open MPI).
 * ring: a token goes round the ranks (each adds its rank), then an
 * all_reduce, a barrier and a communicator split by rank parity, and
 * each rank prints "rank R of N: ring S sum T split K of M on NODE"
 * (NODE: its node's first rank, from MPI_COMM_TYPE_SHARED). abort CODE:
 * rank 1 calls MPI_Abort(CODE), the others wait in a barrier. exit:
 * rank 1 exits 0 without MPI_Finalize. die: rank 1 kills itself with
 * SIGKILL. init: MPI_Init and MPI_Finalize only (the start-up
 * benchmark). publish: rank 0 publishes a port name as "wr-service",
 * rank 1 looks it up, rank 0 unpublishes it, rank 1 finds none; each
 * says what it did in a line. late: the job's last rank (WORLD_RANK)
 * sleeps 60 s before MPI_Init, which the others wait for. spawn N
 * [CODE]: the ranks start N more of this program (MPI_Comm_spawn, root
 * 0); every parent and child sends its rank to each of the other side
 * and says how many it heard right ("rank R: heard N children", "child
 * R heard P parents"); each child prints "child R of N, parent of P",
 * meets its parents in a barrier and exits CODE (0) after MPI_Finalize;
 * the parents print "rank R: spawned N" or "rank R: spawn failed:
 * CLASS". With CODE
 * "grandchild" each child forks a grandchild that ignores SIGTERM, both
 * append their pids to $WR_MPI_PIDS, and both sleep 300 s before the
 * barrier. With CODE "cwd" each child prints "child R in DIR" (its
 * working directory), with "stdin" "child R read N bytes" (its stdin
 * to the end), with "spew" writes 96 MiB of 1 KiB lines of x, with
 * "abort" calls MPI_Abort(7) after the barrier.
 * spawn-missing [N]: a spawn of N (1) of a program that does not exist. spawn-in
 * DIR: from DIR, a spawn of "./wr-spawned" with CODE "cwd".
 * Built for each MPI that is installed.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
ring(int rank, int size)
{
	int token = 0, sum = 0, one = 1, srank, ssize, nrank, node = rank;
	MPI_Comm split, shared;

	if (size > 1 && rank == 0) {
		MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
		MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (size > 1) {
		MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		token += rank;
		MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
	}
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
	MPI_Comm_rank(split, &srank);
	MPI_Comm_size(split, &ssize);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
	MPI_Comm_rank(shared, &nrank);
	MPI_Allreduce(&rank, &node, 1, MPI_INT, MPI_MIN, shared);
	printf("rank %d of %d: ring %d sum %d split %d of %d on %d\n", rank, size, token, sum,
	       srank, ssize, node);
	fflush(stdout);
	MPI_Comm_free(&split);
	MPI_Comm_free(&shared);
}

static void
publish(int rank)
{
	/* A port as MPI_Open_port would give, made up: Debian's MPICH (ch4
	 * over UCX) opens none, but the name service stores any string. */
	char port[MPI_MAX_PORT_NAME] = "tag#0$connentry#wr-made-up-port$", got[MPI_MAX_PORT_NAME];
	int rc;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	if (rank == 0) {
		rc = MPI_Publish_name("wr-service", MPI_INFO_NULL, port);
		printf("rank 0: %s\n", rc == MPI_SUCCESS ? "published" : "publish failed");
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		rc = MPI_Lookup_name("wr-service", MPI_INFO_NULL, got);
		printf("rank 1: %s\n", rc != MPI_SUCCESS ? "no port for wr-service"
		       : strcmp(got, port) == 0 ? "looked up the port rank 0 published"
		       : "looked up another port");
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		rc = MPI_Unpublish_name("wr-service", MPI_INFO_NULL, port);
		printf("rank 0: %s\n", rc == MPI_SUCCESS ? "unpublished" : "unpublish failed");
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		rc = MPI_Lookup_name("wr-service", MPI_INFO_NULL, got);
		printf("rank 1: %s\n", rc != MPI_SUCCESS ? "no port any more" : "still a port");
	}
}

/* Over intercommunicator @inter, every rank of one side sends its rank
 * to every rank of the other: how many of them it heard, right. */
static int
greet(MPI_Comm inter, int rank)
{
	MPI_Request req[128];
	MPI_Status st[128];
	int remote = 0, from[64], heard = 0, n = 0;

	MPI_Comm_remote_size(inter, &remote);
	remote = remote < 64 ? remote : 64;
	for (int r = 0; r < remote; r++) {
		MPI_Irecv(&from[r], 1, MPI_INT, r, 7, inter, &req[n++]);
		MPI_Isend(&rank, 1, MPI_INT, r, 7, inter, &req[n++]);
	}
	MPI_Waitall(n, req, st);
	for (int r = 0; r < remote; r++) {
		heard += from[r] == r;
	}
	return heard;
}

/* MPI_Comm_spawn of @n copies of this program, which greet us and meet
 * us in a barrier (child()). */
static void
spawn(int rank, int n, char *prog, char *code)
{
	MPI_Comm kids;
	int errs[64], rc, cls = 0;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	rc = MPI_Comm_spawn(prog, (char *[]){ "child", code, NULL }, n < 64 ? n : 64,
			    MPI_INFO_NULL, 0, MPI_COMM_WORLD, &kids, errs);
	if (rc != MPI_SUCCESS) {
		MPI_Error_class(rc, &cls);
		printf("rank %d: spawn failed: %d\n", rank, cls);
		fflush(stdout);
		return;
	}
	printf("rank %d: heard %d children\n", rank, greet(kids, rank));
	MPI_Barrier(kids);
	MPI_Comm_disconnect(&kids);
	printf("rank %d: spawned %d\n", rank, n);
	fflush(stdout);
}

/* Append our pid to $WR_MPI_PIDS. */
static void
note_pid(void)
{
	const char *path = getenv("WR_MPI_PIDS");
	FILE *f = path != NULL ? fopen(path, "a") : NULL;

	if (f != NULL) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
}

/* A grandchild that outlives its parent unless its group is killed. */
static void
grandchild(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGTERM, SIG_IGN);
		note_pid();
		sleep(300);
		_exit(0);
	}
	note_pid();
	sleep(300);
}

static void
child(int rank, int size, const char *code)
{
	MPI_Comm parent;
	int parents = 0;

	char buf[4096];
	ssize_t n, got = 0;

	if (strcmp(code, "grandchild") == 0) {
		grandchild();
	} else if (strcmp(code, "cwd") == 0 && getcwd(buf, sizeof(buf)) != NULL) {
		printf("child %d in %s\n", rank, buf);
	} else if (strcmp(code, "spew") == 0) {
		memset(buf, 'x', 1023);
		buf[1023] = '\n';
		for (int i = 0; i < 96 * 1024; i++) {
			fwrite(buf, 1, 1024, stdout);
		}
		fflush(stdout);
	} else if (strcmp(code, "stdin") == 0) {
		while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0) {
			got += n;
		}
		printf("child %d read %zd bytes\n", rank, got);
	}
	MPI_Comm_get_parent(&parent);
	if (parent != MPI_COMM_NULL) {
		MPI_Comm_remote_size(parent, &parents);
		printf("child %d heard %d parents\n", rank, greet(parent, rank));
		MPI_Barrier(parent);
	}
	printf("child %d of %d, parent of %d\n", rank, size, parents);
	fflush(stdout);
	if (strcmp(code, "abort") == 0) {
		MPI_Abort(MPI_COMM_WORLD, 7);
	}
	if (parent != MPI_COMM_NULL) {
		MPI_Comm_disconnect(&parent);
	}
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ring";
	const char *wrank = getenv("WORLD_RANK"), *wsize = getenv("WORLD_SIZE");
	int rank, size, code = 0;

	if (strcmp(mode, "late") == 0 && wrank != NULL && wsize != NULL &&
	    atoi(wrank) == atoi(wsize) - 1) {
		sleep(60);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (strcmp(mode, "ring") == 0) {
		ring(rank, size);
	} else if (strcmp(mode, "publish") == 0) {
		publish(rank);
	} else if (strcmp(mode, "spawn") == 0) {
		spawn(rank, argc > 2 ? atoi(argv[2]) : 1, argv[0], argc > 3 ? argv[3] : "0");
	} else if (strcmp(mode, "spawn-missing") == 0) {
		spawn(rank, argc > 2 ? atoi(argv[2]) : 1, "wr-no-such-program", "0");
	} else if (strcmp(mode, "spawn-in") == 0 && argc > 2 && chdir(argv[2]) == 0) {
		spawn(rank, 1, "./wr-spawned", "cwd");
	} else if (strcmp(mode, "child") == 0) {
		child(rank, size, argc > 2 ? argv[2] : "0");
		code = argc > 2 ? atoi(argv[2]) : 0;
	} else if (rank == 1 && strcmp(mode, "abort") == 0) {
		MPI_Abort(MPI_COMM_WORLD, argc > 2 ? atoi(argv[2]) : 1);
	} else if (rank == 1 && strcmp(mode, "exit") == 0) {
		exit(0);
	} else if (rank == 1 && strcmp(mode, "die") == 0) {
		raise(SIGKILL);
	} else if (strcmp(mode, "ring") != 0 && strcmp(mode, "init") != 0 &&
		   strncmp(mode, "spawn", 5) != 0 && strcmp(mode, "child") != 0 &&
		   strcmp(mode, "late") != 0) {
		MPI_Barrier(MPI_COMM_WORLD);
	}
	MPI_Finalize();
	return code;
}
