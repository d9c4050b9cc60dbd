// Data parallelism on the CPU with Gloo over the loopback: the rendezvous store in one process,
// then jobs of 1, 2 and 4 processes of tests/dist/dist_worker started through dist::launch_local
// (the launcher `grove train --nproc` uses): every collective and dtype, a rank killed mid-run,
// and DistributedDataParallel training that must equal one process on the global batch.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <functional>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "dist/launch.h"
#include "dist/process_group.h"
#include "dist/tcp_store.h"
#include "models/data/fashion_mnist.h"
#include "tests/dist/ddp_params.h"

namespace grove::dist {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

#define SKIP_WITHOUT_GLOO() \
  if (!has_gloo()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)"

std::string message_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.message();
  }
  return "(no error)";
}

using testing::fresh_dir;
using testing::read_floats;
using testing::read_text;
using testing::worst_relative_difference;

int run_job(int nproc, std::vector<std::string> args, std::chrono::seconds timeout = 60s) {
  LaunchOptions options;
  options.nproc = nproc;
  options.argv = {GROVE_DIST_WORKER};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.timeout = timeout;
  options.grace = 5s;
  return launch_local(options);
}

// --- the store, in one process (each thread a rank) ---

TEST(TcpStore, SetGetAddAndWaitAcrossClients) {
  TcpStore server("localhost", 0, 0, 2, /*serve=*/true, 5s);
  TcpStore client("localhost", server.port(), 1, 2, /*serve=*/false, 5s);
  server.set("key", {'a', 'b'});
  EXPECT_EQ(client.get("key"), (std::vector<char>{'a', 'b'}));
  EXPECT_FALSE(client.try_get("absent").has_value());
  EXPECT_EQ(client.add("counter", 2), 2);
  EXPECT_EQ(server.add("counter", 3), 5);
  std::thread later([&] {
    std::this_thread::sleep_for(50ms);
    client.set("late", {'x'});
  });
  EXPECT_EQ(server.get("late"), std::vector<char>{'x'});
  later.join();
  EXPECT_EQ(server.describe_gone_ranks(), "");
}

TEST(TcpStore, WaitingPastTheTimeoutNamesTheKey) {
  TcpStore server("localhost", 0, 0, 1, /*serve=*/true, 200ms);
  const std::string message = message_of([&] { server.get("never"); });
  EXPECT_NE(message.find("timed out after 200 ms waiting for 'never'"), std::string::npos)
      << message;
}

TEST(TcpStore, AClientThatSaysGoodbyeCountsAsFinished) {
  TcpStore server("localhost", 0, 0, 2, /*serve=*/true, 5s);
  { TcpStore client("localhost", server.port(), 1, 2, /*serve=*/false, 5s); }
  // The goodbye is answered before the client closes, so the mark is there now.
  EXPECT_NE(server.describe_gone_ranks().find("rank 1 already finished"), std::string::npos);
}

TEST(TcpStore, NoServerMeansAClearErrorAfterTheTimeout) {
  const int port = pick_free_port();
  const std::string message =
      message_of([&] { TcpStore client("localhost", port, 1, 2, /*serve=*/false, 300ms); });
  EXPECT_NE(message.find("could not connect to the rendezvous store"), std::string::npos)
      << message;
  EXPECT_NE(message.find("is rank 0 running"), std::string::npos) << message;
}

TEST(ProcessGroupOptions, MalformedEnvironmentIsRefusedByName) {
  ::setenv("GROVE_WORLD_SIZE", "two", 1);
  EXPECT_NE(message_of([] { ProcessGroupOptions::from_environment(); }).find("GROVE_WORLD_SIZE"),
            std::string::npos);
  ::setenv("GROVE_WORLD_SIZE", "2", 1);
  ::setenv("GROVE_RANK", "2", 1);
  EXPECT_NE(message_of([] { ProcessGroupOptions::from_environment(); })
                .find("expected GROVE_RANK in [0, GROVE_WORLD_SIZE = 2)"),
            std::string::npos);
  ::setenv("GROVE_RANK", "1", 1);
  ::unsetenv("GROVE_MASTER_PORT");
  EXPECT_NE(message_of([] { ProcessGroupOptions::from_environment(); })
                .find("GROVE_MASTER_PORT is not set"),
            std::string::npos);
  ::unsetenv("GROVE_WORLD_SIZE");
  ::unsetenv("GROVE_RANK");
}

// --- jobs of several processes ---

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryCollectiveAndDtypeGivesTheExpectedValues) {
  SKIP_WITHOUT_GLOO();
  EXPECT_EQ(run_job(GetParam(), {"collectives"}), 0);
}

INSTANTIATE_TEST_SUITE_P(Processes, Collectives, ::testing::Values(1, 2, 4));

TEST(DeadRank, TheOthersFailWithAnErrorNamingIt) {
  SKIP_WITHOUT_GLOO();
  const fs::path dir = fresh_dir("die");
  // A survivor that hung would be killed by the launcher after the timeout and write nothing.
  const int status = run_job(3, {"die", dir.string()}, 20s);
  EXPECT_NE(status, 0);
  for (int rank : {0, 1}) {
    const std::string message = read_text(dir / ("rank" + std::to_string(rank) + ".txt"));
    EXPECT_NE(message.find("rank 2 exited without finishing"), std::string::npos)
        << "rank " << rank << ": " << message;
  }
  fs::remove_all(dir);
}

class Ddp : public ::testing::TestWithParam<std::string> {};

// 20 steps of SGD with momentum: two ranks on 8 images each give the parameters one process
// gets on all 16. The mean of two shards' mean gradients equals the global mean gradient up to
// float rounding (the sums are grouped differently), which 20 steps amplify only slightly: a
// relative 1e-4 bounds it with room, while a missing or doubled reduction is off by far more.
TEST_P(Ddp, TwoProcessesEqualOneOnTheGlobalBatch) {
  SKIP_WITHOUT_GLOO();
  const std::string mode = GetParam();
  const fs::path dir = fresh_dir("ddp_" + mode);
  ASSERT_EQ(run_job(1, {"ddp", dir.string(), mode, "20"}), 0);
  ASSERT_EQ(run_job(2, {"ddp", dir.string(), mode, "20"}), 0);
  const std::vector<float> one = read_floats(dir / ("params_w1_" + mode + ".bin"));
  const std::vector<float> two = read_floats(dir / ("params_w2_" + mode + ".bin"));
  ASSERT_EQ(one.size(), two.size());
  ASSERT_GT(one.size(), 0u);
  EXPECT_LT(worst_relative_difference(one, two), 1e-4);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Modes, Ddp, ::testing::Values("eager", "graphed"));

// The program: `grove train --nproc 2` is one job. Rank 0 alone prints the JSON line, and its
// numbers are those of one process on batches twice as large (the global batch); the train loss
// is a mean over the run's steps, equal up to float rounding.
std::string run_program(const std::string& arguments) {
  const std::string command = std::string(GROVE_PROGRAM) + " " + arguments + " 2>/dev/null";
  std::FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << command;
  return output;
}

double json_number(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key << " in " << json;
  return at == std::string::npos ? NAN : std::stod(json.substr(at + key.size() + 3));
}

TEST(GroveNproc, TwoProcessesTrainLikeOneOnTheGlobalBatch) {
  SKIP_WITHOUT_GLOO();
  const char* data = std::getenv("GROVE_TEST_FASHION_MNIST");
  const std::string data_flag = data != nullptr ? std::string(" --data ") + data : "";
  if (data == nullptr && !fs::exists(data::default_fashion_mnist_dir())) {
    GTEST_SKIP() << "no Fashion-MNIST (dataset-fashion-mnist)";
  }
  const std::string common = "train --model mlp --device cpu --epochs 1 --train-limit 2048 "
                             "--test-limit 2500 --schedule constant --plain --json" + data_flag;
  const std::string two = run_program(common + " --nproc 2 --batch-size 64");
  const std::string one = run_program(common + " --batch-size 128");
  ASSERT_EQ(std::count(two.begin(), two.end(), '\n'), 1) << "one JSON line, rank 0's: " << two;
  EXPECT_EQ(json_number(two, "steps"), 16);
  EXPECT_NEAR(json_number(two, "train_loss"), json_number(one, "train_loss"), 1e-5);
  // The ranks share the evaluation (rank 0 the batches of 1000 test images 0 and 2, rank 1
  // batch 1; the hits added): the same accuracy.
  EXPECT_EQ(json_number(two, "test_accuracy"), json_number(one, "test_accuracy"));
}

}  // namespace
}  // namespace grove::dist
