// The `grove` program:
//   grove train --model mlp|cnn|gpt ...   train, with progress, evaluation and checkpoints
//   grove eval --checkpoint PATH          evaluate a checkpoint's model
//   grove sample --checkpoint PATH ...    generate text with a gpt checkpoint
//   grove plot METRICS.csv -o curve.svg   draw a run's metrics
//   grove info                            build options, devices, library versions
//   grove demo                            a tour of the core layer
// `grove <command> --help` lists a command's options; `grove --version` prints the version (the
// project's, CMakeLists.txt).
#include <algorithm>
#include <iostream>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "models/program/commands.h"
#include "models/program/ctrl_c.h"

int main(int argc, char** argv) {
  grove::program::start_ctrl_c_watcher();  // Note [Ctrl-C on a thread of its own]
  CLI::App app{"grove: train small models, eagerly or as device graphs", "grove"};
  app.set_version_flag("--version", "grove " GROVE_VERSION);
  grove::program::add_commands(app);
  // Options from a file: a section per command and the flags' long names without "--"
  //   [train]
  //   model = "gpt"
  //   steps = 2000
  // Flags on the command line win over the file's; a key that names no option is an error.
  app.set_config("--config", "", "read options from a TOML file: [train] then name = value lines");
  app.allow_config_extras(CLI::config_extras_mode::error);
  // A user's mistake (an unknown command, model or flag, a missing or bad value, missing data, a
  // device that is not there, a checkpoint that does not fit) ends with one line saying what is
  // wrong and exit code 2; --help exits 0; a run stopped by Ctrl-C exits 130.
  const auto is_command = [&](const char* name) {
    for (const CLI::App* command : app.get_subcommands({})) {
      if (command->get_name() == name) return true;
    }
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::cerr << "grove: error: unknown command '" << argv[1]
              << "'; the commands are train, eval, sample, plot, info and demo (grove --help)\n";
    return 2;
  }
  // `grove COMMAND --config FILE ...`: --config is the program's option (its file has a section
  // per command), so it moves in front of the command for the parser.
  std::vector<char*> args(argv, argv + argc);
  for (std::size_t i = 2; i < args.size(); ++i) {
    const std::string_view word = args[i];
    const std::size_t width = word == "--config" && i + 1 < args.size() ? 2
                              : word.rfind("--config=", 0) == 0         ? 1
                                                                        : 0;
    if (width == 0) continue;
    std::rotate(args.begin() + 1, args.begin() + static_cast<std::ptrdiff_t>(i),
                args.begin() + static_cast<std::ptrdiff_t>(i + width));
    break;
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::RuntimeError& stopped) {
    return stopped.get_exit_code();
  } catch (const CLI::ConfigError& error) {
    std::cerr << "grove: error: --config: " << error.what()
              << " (a key names no option: options go in a section per command, [train], named "
                 "as the flags without --, e.g. batch-size = 64)\n";
    return 2;
  } catch (const CLI::ParseError& error) {
    std::cerr << "grove: error: " << error.what() << "; see grove "
              << (app.get_subcommands().empty() ? ""
                                                : app.get_subcommands().front()->get_name() + " ")
              << "--help\n";
    return 2;
  } catch (const grove::Error& error) {
    std::cerr << "grove: error: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {  // from the standard library (files, memory)
    std::cerr << "grove: error: " << error.what() << "\n";
    return 2;
  }
  return 0;
}
