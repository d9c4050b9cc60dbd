// Fuzz target: the program's command line (models/program/commands.h): the app main.cpp builds,
// parsed in OnParse::CheckFlags mode, so a command's flags are checked (turned into a run's
// config and validated, devices looked up) but nothing runs and no file is read.
//
// The input: the words after "grove", one per line (an empty line is an empty word); at most 64.
// Expected outcomes: a clean parse, CLI11's refusal (CLI::ParseError, --help included) or a
// grove::Error from a command's checks; for --help the help text is also formatted.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/program/commands.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words = {"grove"};
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty() && words.size() <= 64) {
    const std::size_t end = rest.find('\n');
    words.emplace_back(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  std::vector<const char*> argv;
  for (const std::string& word : words) argv.push_back(word.c_str());
  argv.push_back(nullptr);

  CLI::App app{"grove (fuzzed)", "grove"};
  grove::program::add_commands(app, grove::program::OnParse::CheckFlags);
  grove::fuzz::expect_only_grove_errors([&] {
    try {
      app.parse(static_cast<int>(words.size()), argv.data());
    } catch (const CLI::CallForHelp&) {
      (void)app.help();
    } catch (const CLI::CallForAllHelp&) {
      (void)app.help("", CLI::AppFormatMode::All);
    } catch (const CLI::ParseError&) {
    }
  });
  return 0;
}
