// The host build: the portable firmware core behind a pseudo-terminal, so that the Python driver
// talks to the same code a Nano 33 BLE runs, through pyserial, without a board.
//
//   hilbench_fw_host            open a new pty, print its path on a line of its own (stdout),
//                               serve the protocol until stdin closes or SIGTERM/SIGINT
//   hilbench_fw_host --mfe      read one sample of int16 PCM on stdin, write the float MFE
//                               values (float32) then the int8 features to stdout, exit
//
// Board layer: micros() is CLOCK_MONOTONIC; the marker pin is a line on stderr,
// "MARK <idle|preprocessing|inference> <CLOCK_MONOTONIC seconds>", which the Python side turns
// into state changes of the simulated meter. SIGUSR1 imitates a reset: the sample is lost and
// the boot banner is sent again.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../hilbench_asc/src/hb_app.h"
#include "../hilbench_asc/src/hb_board.h"
#include "../hilbench_asc/src/hb_mfe.h"

namespace {
int g_master = -1;
volatile sig_atomic_t g_reset = 0;
volatile sig_atomic_t g_quit = 0;
uint8_t g_rx[4096];
ssize_t g_rx_fill = 0, g_rx_pos = 0;

double monotonic_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void write_all(int fd, const uint8_t* data, size_t length) {
  while (length > 0) {
    ssize_t n = write(fd, data, length);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 100);
        continue;
      }
      return;  // the host went away: the data is lost, as on a real serial line
    }
    data += n;
    length -= (size_t)n;
  }
}

int open_pty(char* path, size_t path_size) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -1;
  const char* name = ptsname(master);
  if (!name) return -1;
  snprintf(path, path_size, "%s", name);
  // Hold the slave open in raw mode: no echo of our own output back to us before the driver
  // opens it, and the master keeps working while no one has the terminal open.
  int slave = open(name, O_RDWR | O_NOCTTY);
  if (slave < 0) return -1;
  termios tio;
  tcgetattr(slave, &tio);
  cfmakeraw(&tio);
  tcsetattr(slave, TCSANOW, &tio);
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
  return master;
}

int run_mfe_tool() {
  static int16_t pcm[HB_SAMPLE_COUNT];
  static float values[HB_INPUT_FRAMES * HB_NUM_FILTERS];
  static int8_t features[HB_INPUT_FRAMES * HB_NUM_FILTERS];
  size_t want = sizeof pcm, got = 0;
  while (got < want) {
    ssize_t n = read(0, (uint8_t*)pcm + got, want - got);
    if (n <= 0) {
      fprintf(stderr, "--mfe: expected %zu bytes of int16 PCM on stdin, got %zu\n", want, got);
      return 2;
    }
    got += (size_t)n;
  }
  hb::mfe(pcm, features, values);
  write_all(1, (const uint8_t*)values, sizeof values);
  write_all(1, (const uint8_t*)features, sizeof features);
  return 0;
}
}  // namespace

namespace board {
uint32_t micros() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + ts.tv_nsec / 1000);
}

int read_byte() {
  if (g_rx_pos >= g_rx_fill) {
    ssize_t n = read(g_master, g_rx, sizeof g_rx);
    if (n <= 0) return -1;
    g_rx_fill = n;
    g_rx_pos = 0;
  }
  return g_rx[g_rx_pos++];
}

void write(const uint8_t* data, size_t length) { write_all(g_master, data, length); }

void marker(HbStage stage) {
  static const char* const kNames[] = {"idle", "preprocessing", "inference"};
  fprintf(stderr, "MARK %s %.9f\n", kNames[stage], monotonic_s());
  fflush(stderr);
}

const char* name() { return "host-build"; }
bool simulated() { return true; }
}  // namespace board

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--mfe") == 0) return run_mfe_tool();
  if (argc > 1) {
    fprintf(stderr,
            "usage: %s [--mfe]\n"
            "  no option: serve the hilbench serial protocol on a new pseudo-terminal (its path\n"
            "             is printed on stdout) until stdin closes; SIGUSR1 imitates a reset\n"
            "  --mfe:     int16 PCM on stdin -> float32 MFE values + int8 features on stdout\n",
            argv[0]);
    return 2;
  }
  char path[128];
  g_master = open_pty(path, sizeof path);
  if (g_master < 0) {
    fprintf(stderr, "cannot open a pseudo-terminal: %s\n", strerror(errno));
    return 1;
  }
  struct sigaction sa = {};
  sa.sa_handler = [](int) { g_reset = 1; };
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = [](int) { g_quit = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  printf("%s\n", path);
  fflush(stdout);
  hb::app_begin();
  bool watch_stdin = true;
  while (!g_quit) {
    if (g_reset) {
      g_reset = 0;
      g_rx_fill = g_rx_pos = 0;
      tcflush(g_master, TCIFLUSH);
      hb::app_begin();
    }
    pollfd fds[2] = {{g_master, POLLIN, 0}, {0, POLLIN, 0}};
    int n = poll(fds, watch_stdin ? 2 : 1, 1000);
    if (n < 0 && errno != EINTR) break;
    if (n > 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
      char buf[256];
      ssize_t r = read(0, buf, sizeof buf);
      if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) break;  // parent gone
    }
    if (n > 0 && (fds[1].revents & POLLNVAL)) watch_stdin = false;
    if (fds[0].revents & POLLIN || g_rx_pos < g_rx_fill) hb::app_poll();
    while (g_rx_pos < g_rx_fill && !g_reset) hb::app_poll();
  }
  return 0;
}
