// grove's modules in one include: the Module base, the layers, Sequential and the initialisers.
// Not the reference models (models/zoo) and not the optimizers (models/optim).
#pragma once

#include "models/nn/attention.h"
#include "models/nn/conv.h"
#include "models/nn/embedding.h"
#include "models/nn/init.h"
#include "models/nn/layers.h"
#include "models/nn/linear.h"
#include "models/nn/module.h"
#include "models/nn/normalization.h"
#include "models/nn/sequential.h"
