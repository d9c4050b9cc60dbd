// The `grove` program:
//   grove train --model mlp|cnn|gpt ...   train, with progress, evaluation and checkpoints
//   grove eval --checkpoint PATH          evaluate a checkpoint's model
//   grove sample --checkpoint PATH ...    generate text with a gpt checkpoint
//   grove plot METRICS.csv -o curve.svg   draw a run's metrics
//   grove info                            build options, devices, library versions
//   grove demo                            a tour of the core layer
// `grove <command> --help` lists a command's options.
#include <iostream>

#include "core/error.h"
#include "models/program/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"grove: train small models, eagerly or as device graphs", "grove"};
  app.require_subcommand(1);
  grove::program::add_train_command(app);
  grove::program::add_eval_command(app);
  grove::program::add_sample_command(app);
  grove::program::add_plot_command(app);
  grove::program::add_info_command(app);
  grove::program::add_demo_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const grove::Error& error) {
    std::cerr << "grove: error: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
