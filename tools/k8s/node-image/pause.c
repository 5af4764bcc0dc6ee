/* The pod sandbox's process for the real-node stack (tools/k8s/stack.sh): PID 1 of every pod's sandbox. It waits
 * for a signal, reaps any child it inherits, and exits 0 on SIGTERM or SIGINT, so a pod stops as soon as the kubelet
 * asks. Built with `gcc -static`: the image holds nothing else. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction sa = {0};
  sa.sa_handler = stop;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sa.sa_handler = reap;
  sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGCHLD, &sa, NULL);
  for (;;) pause();
  return 0;
}
