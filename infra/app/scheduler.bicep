// Durable Task Scheduler: a scheduler, the task hub host.json names, and the Durable Task Data
// Contributor role for the app's identity.
param location string
param tags object
param name string
param taskHubName string
param principalId string

resource scheduler 'Microsoft.DurableTask/schedulers@2025-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    sku: { name: 'Consumption' }
    // Callers still need the role below; an empty list would refuse everyone.
    ipAllowlist: ['0.0.0.0/0']
  }
}

resource taskHub 'Microsoft.DurableTask/schedulers/taskHubs@2025-11-01' = {
  parent: scheduler
  name: taskHubName
}

var durableTaskDataContributorRole = '0ad04412-c4d5-4796-b79c-f76d14c8d402'
resource contributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(scheduler.id, principalId, durableTaskDataContributorRole)
  scope: scheduler
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', durableTaskDataContributorRole)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

output endpoint string = scheduler.properties.endpoint
output taskHubName string = taskHub.name
